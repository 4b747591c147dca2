// The six sample companies as the EDGAR sample describes them: identifiers EDGAR uses for them (CIK, registrant
// name, SIC), the figures the sample's filings and XBRL facts are built from, and a few sentences of invented text
// for their documents. Annual EPS and net margins are the sample market data's (sample-data.ts: `annualEps`,
// `annualNetMargin`, fiscal year ends), shares outstanding its profile's, quarterly growth and margins its TTM
// metrics, so that the two samples agree where they overlap. Everything else is illustrative.

export interface SampleCompany {
  ticker: string;
  cik: number;
  /** As company_tickers.json titles it. */
  title: string;
  /** As the submissions file names it. */
  name: string;
  sic: string;
  sicDescription: string;
  stateOfIncorporation: string;
  fileNumber: string;
  /** Fiscal year ends, newest first: the sample market data's annual series. */
  fiscalYearEnds: [string, string, string];
  /** 52/53-week fiscal years (quarters of 13 weeks) rather than calendar months. */
  weekBased: boolean;
  revenueConcept: 'Revenues' | 'RevenueFromContractWithCustomerExcludingAssessedTax';
  /** Per fiscal year, newest first. */
  eps: [number, number, number];
  netMargin: [number, number, number];
  /** Diluted weighted shares, billions, per fiscal year. */
  dilutedShares: [number, number, number];
  /** Latest fiscal year's margins (fractions); earlier years are half a point lower per year. */
  grossMargin: number;
  operatingMargin: number;
  /** The TTM metrics used for the two latest quarters: revenue growth and net margin (fractions). */
  quarterGrowth: number;
  quarterNetMargin: number;
  /** Share of a fiscal year's revenue in its first and second quarters. */
  quarterShares: [number, number];
  /** Shares outstanding on the latest cover page, millions (the sample profile's shareOutstanding). */
  sharesOutstandingMillions: number;
  /** Latest fiscal year-end balance sheet, billions. */
  balance: {
    assets: number;
    equity: number;
    assetsCurrent: number;
    liabilitiesCurrent: number;
    cash: number;
    longTermDebt: number;
  };
  /** Operating cash flow per dollar of net income; capital expenditure per dollar of revenue. */
  cashConversion: number;
  capexRatio: number;
  business: string[];
  risks: Array<[title: string, text: string]>;
  /** What drove the latest year, for MD&A. */
  drivers: string;
  /** The latest quarter's driver, for the 10-Q's MD&A. */
  quarterDriver: string;
  /** A risk factor the 10-Q adds to the annual report's. */
  quarterRisk: [title: string, text: string];
  officer: string;
  agreement: string;
  otherEvent: string;
}

export const SAMPLE_COMPANIES: SampleCompany[] = [
  {
    ticker: 'AAPL',
    cik: 320193,
    title: 'Apple Inc.',
    name: 'Apple Inc.',
    sic: '3571',
    sicDescription: 'Electronic Computers',
    stateOfIncorporation: 'CA',
    fileNumber: '001-36743',
    fiscalYearEnds: ['2025-09-27', '2024-09-28', '2023-09-30'],
    weekBased: true,
    revenueConcept: 'RevenueFromContractWithCustomerExcludingAssessedTax',
    eps: [6.95, 6.11, 6.16],
    netMargin: [0.2461, 0.2397, 0.2531],
    dilutedShares: [14.95, 15.41, 15.81],
    grossMargin: 0.468,
    operatingMargin: 0.319,
    quarterGrowth: 0.062,
    quarterNetMargin: 0.249,
    quarterShares: [0.295, 0.235],
    sharesOutstandingMillions: 14850.2,
    balance: { assets: 365, equity: 66, assetsCurrent: 162, liabilitiesCurrent: 176, cash: 30, longTermDebt: 85 },
    cashConversion: 1.15,
    capexRatio: 0.03,
    business: [
      'The Company designs, manufactures and markets smartphones, personal computers, tablets, wearables and accessories, and sells a variety of related services.',
      'Services include advertising, cloud storage, digital content, payment services and the App Store. Products are sold through retail and online stores, carriers, wholesalers and resellers.',
    ],
    risks: [
      [
        'The Company depends on component suppliers and contract manufacturers located primarily outside the U.S.',
        'Substantially all of the Company’s hardware products are assembled by outsourcing partners in a small number of locations in Asia. A disruption at one of these sites, including from trade restrictions or tariffs, could delay shipments and raise costs.',
      ],
      [
        'Changes to App Store rules required by regulators could reduce Services revenue.',
        'Laws such as the European Union’s Digital Markets Act require changes to how developers distribute apps and process payments. Lower commission rates or alternative app marketplaces could reduce the Company’s Services revenue and gross margin.',
      ],
      [
        'The markets for the Company’s products are highly competitive.',
        'Smartphone and personal computer markets are mature and subject to aggressive pricing. Competitors that imitate the Company’s features or sell at lower prices could reduce its market share and margins.',
      ],
      [
        'Foreign exchange rates affect the Company’s results.',
        'A majority of net sales are earned outside the U.S. A stronger U.S. dollar reduces the dollar value of those sales and may require price increases that lower demand.',
      ],
    ],
    drivers: 'higher Services net sales and stable iPhone net sales, partially offset by lower Wearables net sales',
    quarterDriver: 'the holiday-season launch of new iPhone models and continued growth in Services',
    quarterRisk: [
      'New tariffs on imported components could increase the Company’s costs.',
      'During the quarter additional tariffs were announced on certain electronics imported into the U.S. If they take effect, the Company may bear higher costs or raise prices.',
    ],
    officer:
      'the Company’s Chief Operating Officer will retire at the end of the calendar year; the Board appointed a successor effective on that date',
    agreement: 'a multi-year supply agreement with a display supplier for panels used in future products',
    otherEvent: 'the Board declared a quarterly cash dividend and authorised an additional $100 billion share repurchase program',
  },
  {
    ticker: 'MSFT',
    cik: 789019,
    title: 'MICROSOFT CORP',
    name: 'MICROSOFT CORP',
    sic: '7372',
    sicDescription: 'Services-Prepackaged Software',
    stateOfIncorporation: 'WA',
    fileNumber: '001-37845',
    fiscalYearEnds: ['2025-06-30', '2024-06-30', '2023-06-30'],
    weekBased: false,
    revenueConcept: 'RevenueFromContractWithCustomerExcludingAssessedTax',
    eps: [12.1, 11.8, 9.68],
    netMargin: [0.3579, 0.3604, 0.3415],
    dilutedShares: [7.47, 7.47, 7.47],
    grossMargin: 0.694,
    operatingMargin: 0.452,
    quarterGrowth: 0.151,
    quarterNetMargin: 0.358,
    quarterShares: [0.25, 0.25],
    sharesOutstandingMillions: 7435.1,
    balance: { assets: 560, equity: 271, assetsCurrent: 183, liabilitiesCurrent: 140, cash: 28, longTermDebt: 43 },
    cashConversion: 1.4,
    capexRatio: 0.25,
    business: [
      'The Company develops and supports software, services, devices and solutions. Its segments are Productivity and Business Processes, Intelligent Cloud, and More Personal Computing.',
      'The Intelligent Cloud segment includes Azure and other cloud services, server products and enterprise support.',
    ],
    risks: [
      [
        'Investments in AI infrastructure may not earn the expected returns.',
        'The Company is making significant capital expenditures on datacenters and specialised chips to meet demand for AI services. If demand grows more slowly than capacity, these investments could lower operating margins.',
      ],
      [
        'Cyberattacks and security vulnerabilities could harm the Company’s reputation.',
        'The Company’s products and cloud services are targets of sophisticated attackers, including nation-state actors. A significant breach could result in lost customers, remediation costs and regulatory penalties.',
      ],
      [
        'Competition in cloud and AI services is intense.',
        'Large and well-funded competitors offer cloud platforms and AI models at aggressive prices, which could reduce the Company’s share of new workloads.',
      ],
      [
        'Government regulation of AI and competition could restrict the Company’s business.',
        'New rules on AI systems, data protection and competition in several jurisdictions could require changes to products or limit acquisitions.',
      ],
    ],
    drivers:
      'growth in Azure and other cloud services and in Microsoft 365 commercial, partially offset by higher depreciation of datacenter assets',
    quarterDriver: 'Azure consumption growth driven by AI workloads',
    quarterRisk: [
      'Datacenter capacity constraints could limit near-term cloud revenue.',
      'Demand for AI capacity exceeded available supply during the quarter. Delays in power, equipment or construction could defer revenue.',
    ],
    officer: 'the Board elected a new independent director, who will serve on the Audit Committee',
    agreement: 'a long-term power purchase agreement to supply datacenters in two regions',
    otherEvent: 'the Company completed the previously announced sale of a non-core business unit',
  },
  {
    ticker: 'NVDA',
    cik: 1045810,
    title: 'NVIDIA CORP',
    name: 'NVIDIA CORP',
    sic: '3674',
    sicDescription: 'Semiconductors & Related Devices',
    stateOfIncorporation: 'DE',
    fileNumber: '000-23985',
    fiscalYearEnds: ['2026-01-25', '2025-01-26', '2024-01-28'],
    weekBased: true,
    revenueConcept: 'Revenues',
    eps: [2.94, 1.19, 0.17],
    netMargin: [0.5585, 0.4885, 0.1619],
    dilutedShares: [24.6, 24.9, 25.1],
    grossMargin: 0.726,
    operatingMargin: 0.618,
    quarterGrowth: 0.624,
    quarterNetMargin: 0.531,
    quarterShares: [0.25, 0.25],
    sharesOutstandingMillions: 24354.3,
    balance: { assets: 111, equity: 70, assetsCurrent: 70, liabilitiesCurrent: 17, cash: 9, longTermDebt: 6 },
    cashConversion: 1.05,
    capexRatio: 0.025,
    business: [
      'The Company is a full-stack computing infrastructure company. Its Compute & Networking segment includes data-center accelerated computing platforms and networking; its Graphics segment includes GPUs for gaming and professional visualization.',
      'The Company relies on third parties to manufacture, assemble and test its products.',
    ],
    risks: [
      [
        'Export controls restrict sales of the Company’s products to certain countries.',
        'U.S. export controls require licences to ship advanced data-center products to China and other destinations. Additional restrictions could eliminate revenue from affected customers and leave the Company with excess inventory.',
      ],
      [
        'A small number of customers account for a large share of revenue.',
        'Sales to a few cloud service providers represented a significant portion of data-center revenue. A reduction in their purchases would materially affect the Company’s results.',
      ],
      [
        'The Company depends on a limited number of suppliers for wafers and advanced packaging.',
        'Capacity for advanced packaging is concentrated in a few suppliers. Shortages or disruptions could limit the Company’s ability to meet demand.',
      ],
      [
        'Product transitions are complex and may cause volatility in revenue.',
        'The Company introduces new architectures frequently. Transitions may lower yields, raise costs and cause customers to delay purchases.',
      ],
    ],
    drivers: 'demand for data-center computing platforms for training and inference of AI models',
    quarterDriver: 'shipments of the new data-center architecture to cloud service providers',
    quarterRisk: [
      'Changes in export licence requirements affected the quarter.',
      'A new licence requirement for certain products took effect during the quarter, and the Company recorded a charge for inventory it may not be able to sell.',
    ],
    officer: 'the Company appointed a new Chief Accounting Officer',
    agreement: 'a multi-year capacity reservation agreement with a packaging supplier',
    otherEvent: 'the Company announced a ten-for-one forward stock split to be effected as a stock dividend',
  },
  {
    ticker: 'GOOGL',
    cik: 1652044,
    title: 'Alphabet Inc.',
    name: 'Alphabet Inc.',
    sic: '7370',
    sicDescription: 'Services-Computer Programming, Data Processing, Etc.',
    stateOfIncorporation: 'DE',
    fileNumber: '001-37580',
    fiscalYearEnds: ['2025-12-31', '2024-12-31', '2023-12-31'],
    weekBased: false,
    revenueConcept: 'RevenueFromContractWithCustomerExcludingAssessedTax',
    eps: [8.04, 8.04, 5.8],
    netMargin: [0.3012, 0.2862, 0.2401],
    dilutedShares: [13.1, 12.45, 12.72],
    grossMargin: 0.589,
    operatingMargin: 0.334,
    quarterGrowth: 0.132,
    quarterNetMargin: 0.301,
    quarterShares: [0.24, 0.25],
    sharesOutstandingMillions: 12198.4,
    balance: { assets: 460, equity: 340, assetsCurrent: 171, liabilitiesCurrent: 90, cash: 24, longTermDebt: 25 },
    cashConversion: 1.3,
    capexRatio: 0.15,
    business: [
      'Alphabet is a collection of businesses, the largest of which is Google. Google Services include Search, YouTube, Android, Chrome and Google Play; Google Cloud provides infrastructure and platform services.',
      'Most of the Company’s revenue comes from advertising.',
    ],
    risks: [
      [
        'The Company generates most of its revenue from advertising.',
        'Reduced spending by advertisers, changes in how users interact with search, or the loss of advertising partners could harm the Company’s revenue.',
      ],
      [
        'Antitrust proceedings could require changes to the Company’s business.',
        'Courts and regulators in the U.S. and elsewhere have found or alleged violations of competition law. Remedies could restrict distribution agreements or require divestitures.',
      ],
      [
        'AI-based products could change how users search for information.',
        'New AI assistants from competitors could reduce queries on the Company’s properties, and the Company’s own AI features may monetise at lower rates than traditional search ads.',
      ],
      [
        'Privacy and data protection laws limit how the Company uses data.',
        'Stricter rules on consent and targeted advertising could reduce the effectiveness of ads and increase compliance costs.',
      ],
    ],
    drivers: 'growth in Google Search and YouTube advertising revenues and in Google Cloud',
    quarterDriver: 'Google Cloud revenue growth and higher search advertising revenues',
    quarterRisk: [
      'A court’s remedies decision may affect distribution agreements.',
      'During the quarter a court issued a remedies decision in a U.S. antitrust case. The Company intends to appeal; the outcome could change its default-placement agreements.',
    ],
    officer: 'the Company’s Chief Financial Officer will step down; the Board appointed an interim successor',
    agreement: 'a credit agreement providing a $10 billion revolving credit facility',
    otherEvent: 'the Board authorised an additional $70 billion of Class A and Class C share repurchases',
  },
  {
    ticker: 'AMZN',
    cik: 1018724,
    title: 'AMAZON COM INC',
    name: 'AMAZON COM INC',
    sic: '5961',
    sicDescription: 'Retail-Catalog & Mail-Order Houses',
    stateOfIncorporation: 'DE',
    fileNumber: '000-22513',
    fiscalYearEnds: ['2025-12-31', '2024-12-31', '2023-12-31'],
    weekBased: false,
    revenueConcept: 'RevenueFromContractWithCustomerExcludingAssessedTax',
    eps: [5.53, 5.53, 2.9],
    netMargin: [0.1029, 0.0929, 0.0529],
    dilutedShares: [11.9, 10.72, 10.49],
    grossMargin: 0.496,
    operatingMargin: 0.113,
    quarterGrowth: 0.108,
    quarterNetMargin: 0.104,
    quarterShares: [0.23, 0.24],
    sharesOutstandingMillions: 10623.1,
    balance: { assets: 625, equity: 285, assetsCurrent: 191, liabilitiesCurrent: 180, cash: 78, longTermDebt: 58 },
    cashConversion: 1.8,
    capexRatio: 0.14,
    business: [
      'The Company serves consumers, sellers, developers, enterprises and content creators through its online and physical stores, Amazon Web Services (AWS) and advertising.',
      'Its segments are North America, International and AWS.',
    ],
    risks: [
      [
        'The Company faces intense competition in retail and cloud services.',
        'Competitors may have greater resources in some markets, and customers can easily switch between providers, which puts pressure on prices and margins.',
      ],
      [
        'The Company’s fulfilment network requires significant investment and labour.',
        'Expansion and operation of fulfilment and logistics facilities require large capital expenditures and many employees; labour shortages or cost increases could reduce operating income.',
      ],
      [
        'Government regulation is evolving and unfavourable changes could harm the Company.',
        'The Company is subject to competition, consumer protection, tax and data rules in many jurisdictions, and to investigations of its marketplace practices.',
      ],
      [
        'AWS capacity investments may not match demand.',
        'The Company is increasing capital expenditures for AI infrastructure. If customer demand does not grow as expected, depreciation would weigh on AWS operating margins.',
      ],
    ],
    drivers: 'growth in AWS and advertising services and lower fulfilment costs per unit',
    quarterDriver: 'AWS growth and advertising services revenue',
    quarterRisk: [
      'Higher tariffs could reduce consumer demand and sellers’ selection.',
      'Changes in trade policy announced during the quarter may raise prices for goods sold in the Company’s stores.',
    ],
    officer: 'the Company announced that the CEO of its devices business will leave the Company',
    agreement: 'a multi-year agreement to purchase custom networking equipment for AWS datacenters',
    otherEvent: 'the Company announced a reorganisation of its logistics network in North America',
  },
  {
    ticker: 'TSLA',
    cik: 1318605,
    title: 'Tesla, Inc.',
    name: 'Tesla, Inc.',
    sic: '3711',
    sicDescription: 'Motor Vehicles & Passenger Car Bodies',
    stateOfIncorporation: 'TX',
    fileNumber: '001-34756',
    fiscalYearEnds: ['2025-12-31', '2024-12-31', '2023-12-31'],
    weekBased: false,
    revenueConcept: 'Revenues',
    eps: [2.04, 4.3, 4.73],
    netMargin: [0.0721, 0.1541, 0.1551],
    dilutedShares: [3.5, 3.49, 3.48],
    grossMargin: 0.172,
    operatingMargin: 0.069,
    quarterGrowth: -0.016,
    quarterNetMargin: 0.064,
    quarterShares: [0.24, 0.25],
    sharesOutstandingMillions: 3220.2,
    balance: { assets: 125, equity: 78, assetsCurrent: 58, liabilitiesCurrent: 29, cash: 17, longTermDebt: 6.5 },
    cashConversion: 2.0,
    capexRatio: 0.11,
    business: [
      'The Company designs, develops, manufactures, sells and leases electric vehicles and energy generation and storage systems.',
      'Its segments are automotive, and energy generation and storage.',
    ],
    risks: [
      [
        'Demand for the Company’s vehicles depends on pricing and incentives.',
        'Price reductions to sustain volumes have lowered automotive gross margin. Changes to government incentives for electric vehicles could reduce demand further.',
      ],
      [
        'Revenue from regulatory credits may decline.',
        'Other manufacturers buy regulatory credits from the Company to meet emissions rules. Changes to those rules, or competitors producing more electric vehicles, could reduce this revenue.',
      ],
      [
        'The Company depends heavily on its Chief Executive Officer.',
        'The loss of its Chief Executive Officer’s services, or a reduction in the time he devotes to the Company, could disrupt its business.',
      ],
      [
        'Raw material costs and supply affect battery production.',
        'Prices of lithium, nickel and other materials are volatile, and supply is concentrated in a few countries.',
      ],
    ],
    drivers: 'lower average selling prices of vehicles, partially offset by growth in energy storage deployments',
    quarterDriver: 'higher energy storage deployments, partially offset by lower vehicle deliveries',
    quarterRisk: [
      'The expiry of consumer tax credits could reduce U.S. demand.',
      'Federal tax credits for new electric vehicles are scheduled to end, which may pull demand forward and reduce deliveries afterwards.',
    ],
    officer: 'the Company appointed a new Chief Financial Officer',
    agreement: 'a multi-year supply agreement for lithium iron phosphate battery cells',
    otherEvent: 'the Company announced the start of production at a new energy storage factory',
  },
];
